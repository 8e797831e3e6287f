"""Fine-tuning in small: Hugging Face BERT (2 layers, random weights) with a classification head, the
model compiled, AdamW and a loss over two steps."""
import torch
from transformers import BertConfig, BertForSequenceClassification


def main(steps: int = 2) -> None:
    torch.manual_seed(0)
    cfg = BertConfig(num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                     vocab_size=128, max_position_embeddings=64, num_labels=3)
    net = BertForSequenceClassification(cfg).train()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
    step_model = torch.compile(net, backend="aot_eager")
    ids = torch.randint(0, 128, (2, 12), generator=torch.Generator().manual_seed(0))
    labels = torch.tensor([0, 2])
    for _ in range(steps):
        out = step_model(input_ids=ids, labels=labels)
        out.loss.backward()
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    main()
