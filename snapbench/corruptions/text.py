"""(placeholder: the 8 text operators are being written)"""


def corrupt_text(text, operator, *, entity=None, seed=0, key=""):
    raise NotImplementedError
