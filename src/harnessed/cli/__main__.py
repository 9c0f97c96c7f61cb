"""``python -m harnessed.cli``: the same as the ``harnessed`` command."""

from harnessed.cli.main import main

raise SystemExit(main())
