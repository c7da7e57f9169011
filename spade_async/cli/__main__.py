"""``python -m spade_async.cli``: the same as the ``spade-async`` command."""

from spade_async.cli.app import main

if __name__ == "__main__":
    main()
