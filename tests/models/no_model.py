"""Defines neither `model` nor compiles anything."""
import torch

x = torch.ones(2)
