"""The project's built programs, as ctest names them in the environment."""

import os

import pytest


def redbloom_cli():
    """The redbloom command from REDBLOOM_CLI; fails the test when it is not there."""
    path = os.environ.get("REDBLOOM_CLI")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("REDBLOOM_CLI must name the built redbloom command (ctest sets it)")
    return path
