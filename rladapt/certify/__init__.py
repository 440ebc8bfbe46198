"""``rladapt certify``: a job run uninterrupted, then killed and resumed, compared step by step (``run``), and
the certificate that says what held (``certificate``)."""

from __future__ import annotations

from .certificate import CERTIFICATE_FORMAT, Certificate, Check, Interruption, compare
from .run import LAUNCHER, Options, certify

__all__ = [
    "CERTIFICATE_FORMAT",
    "LAUNCHER",
    "Certificate",
    "Check",
    "Interruption",
    "Options",
    "certify",
    "compare",
]
