"""``triton.experimental``: only the names scripts import; see ``gluon``."""
