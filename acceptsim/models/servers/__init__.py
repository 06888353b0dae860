"""Server architectures.  Each module reads like the paper's description of that server."""
