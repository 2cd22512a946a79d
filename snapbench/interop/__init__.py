"""Bridges to other libraries' pipelines; each submodule needs its extra and is imported on demand.

* :mod:`snapbench.interop.albumentations` -- snapbench operators as albumentations transforms, and
  any albumentations transform as a snapbench image operator (the ``albumentations`` extra).
* :mod:`snapbench.interop.nlpaug` -- snapbench text operators as nlpaug augmenters, and any nlpaug
  augmenter as a seeded snapbench text operator (the ``nlpaug`` extra).
* :mod:`snapbench.interop.torch` -- corrupted query sets as ``torch.utils.data`` datasets and a
  torchvision-v2-style transform (the ``torch`` extra).

Nothing is imported here, so ``import snapbench.interop`` costs nothing and needs no extra.
"""
