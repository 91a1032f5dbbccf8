"""The compiled hot path: which implementation runs (``implementation``) and its mypyc build
(``build``, ``make native``)."""
