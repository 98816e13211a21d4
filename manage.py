#!/usr/bin/env python
import sys


def main() -> None:
    from config.cli import main as run

    run(sys.argv)


if __name__ == "__main__":
    main()
