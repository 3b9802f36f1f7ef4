"""Where users already train: ``integrations.lightning.BottleneckCallback`` (PyTorch Lightning,
extra ``[lightning]``) and ``integrations.transformers.BottleneckCallback`` (Hugging Face
Trainer, extra ``[hf]``). Each imports its framework; the core package needs neither."""
