"""The fake ``nvidia-cuda-mps-control`` (``xwatch.testing.fake_mps``, shared with the
fleet's speed benchmark), under the name the tests import it by."""

from xwatch.testing.fake_mps import commands, make_tool

__all__ = ["commands", "make_tool"]
