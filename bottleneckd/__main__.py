"""``python -m bottleneckd`` works like the ``bottleneckd`` command."""

from bottleneckd.cli.main import main

if __name__ == "__main__":
    main()
