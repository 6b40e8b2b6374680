"""Gluon: MXNet's imperative interface (blocks, parameters, losses, data, Trainer)."""
