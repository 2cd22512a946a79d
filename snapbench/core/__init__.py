"""snapbench.core."""
