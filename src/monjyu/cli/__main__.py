"""`python -m monjyu.cli`."""

from . import main

main()
