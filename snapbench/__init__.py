"""snapbench: paired robustness evaluation of image+text retrieval."""

__version__ = "0.1.0"
