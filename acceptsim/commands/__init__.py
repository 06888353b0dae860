"""Sub-commands of ``acceptsim``: each module has ``add_parser(subparsers)`` and ``main(args)``."""
