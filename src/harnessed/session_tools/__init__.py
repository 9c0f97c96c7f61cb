"""Session tools: the model lists, reads and searches its earlier sessions."""
