"""The page's syntax highlighting (render/highlight.py): lossless, and colouring what Pygments colours."""

from __future__ import annotations

import html
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tcinspect.render.highlight import highlight

_TAG = re.compile(r"</?span[^>]*>")


def _text(highlighted: str) -> str:
    return html.unescape(_TAG.sub("", highlighted))


def _spans(highlighted: str) -> list[tuple[str, str]]:
    return [(m[1], html.unescape(m[2])) for m in re.finditer(r'<span class="(\w+)">(.*?)</span>', highlighted, re.S)]


WRAPPER = '''# AOT ID: ['0_forward']
from ctypes import c_void_p
import torch

@triton.jit
def triton_poi_fused_add_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 512
    x0 = xindex % 64
    tmp1 = tl.load(in_ptr0 + (x0), xmask, eviction_policy='evict_last').to(tl.float32)
    tmp2 = 1e-06 if x0 is not None and not flag else 0x1F
    """docstring with 'quotes' and # no comment"""

class Runner:
    def call(self, args):
        buf0 = empty_strided_cuda((4, 64), (64, 1), torch.float32)  # a comment <b>&
        return (buf0, )
'''
CPP = '''#include "/tmp/torchinductor_root/pi/cpicxudqmdsjh5cm4klbtbrvy2d5ubjfqsa6vwkbnhdftrg7ltw.h"
extern "C"  void kernel(const float* in_ptr0, float* out_ptr0)
{
    /* a block
       comment */
    for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(64L); x0+=static_cast<int64_t>(16L))
    {
        auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
        auto tmp1 = static_cast<float>(0.5) * 'c';  // a comment
    }
}
'''


def test_a_block_keeps_its_text_and_colours_its_python_tokens():
    out = highlight(WRAPPER)
    assert _text(out) == WRAPPER
    spans = _spans(out)
    for want in [("c", "# AOT ID: ['0_forward']"), ("k", "from"), ("k", "import"), ("nd", "@triton.jit"),
                 ("k", "def"), ("nf", "triton_poi_fused_add_0"), ("m", "512"), ("s", "'evict_last'"), ("m", "1e-06"),
                 ("ow", "is"), ("k", "None"), ("ow", "not"), ("m", "0x1F"), ("k", "class"), ("nc", "Runner"),
                 ("nb", "self"), ("c", "# a comment <b>&"), ("k", "return"), ("o", "%"), ("o", "+"), ("o", "=")]:
        assert want in spans, want
    # a string's contents are one string, whatever they hold
    assert ("s", '"""docstring with \'quotes\' and # no comment"""') in spans
    assert not any(cls == "c" and "no comment" in text for cls, text in spans)
    # names that are neither keywords nor builtins stay plain text
    assert not any(text in ("buf0", "tmp1", "xnumel") for _, text in spans)
    assert "&lt;b&gt;&amp;" in out


def test_a_cpp_kernel_keeps_its_text_and_colours_its_tokens():
    out = highlight(CPP, "cpp")
    assert _text(out) == CPP
    spans = _spans(out)
    for want in [("cp", CPP.splitlines()[0]), ("k", "extern"), ("s", '"C"'), ("kt", "void"), ("k", "const"),
                 ("kt", "float"), ("c", "/* a block\n       comment */"), ("k", "for"), ("kt", "int64_t"),
                 ("k", "static_cast"), ("m", "0L"), ("kt", "auto"), ("m", "0.5"), ("s", "'c'"), ("c", "// a comment"),
                 ("o", "::"), ("o", "+=")]:
        assert want in spans, want


def test_unterminated_strings_and_comments_end_with_the_block():
    for text, language in [("x = '''never closed\nstill", "python"), ('s = "open', "python"),
                           ("/* open comment\nint x;", "cpp")]:
        out = highlight(text, language)
        assert _text(out) == text


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200), st.sampled_from(["python", "cpp"]))
def test_any_text_comes_back_unchanged_under_the_spans(text, language):
    out = highlight(text, language)
    assert _text(out) == text
    assert "<" not in _TAG.sub("", out) and ">" not in _TAG.sub("", out)
