"""Where users already train: ``integrations.lightning.BottleneckCallback`` (PyTorch Lightning,
extra ``[lightning]``; ``integrations.pytorch_lightning`` for the older ``pytorch_lightning`` package,
extra ``[pytorch-lightning]``) and ``integrations.transformers.BottleneckCallback`` (Hugging Face
Trainer, extra ``[hf]``). Each imports its framework; the core package needs none of them."""
