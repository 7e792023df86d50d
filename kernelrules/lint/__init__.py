"""``kernelrules lint`` and ``check-config``: findings, reports, settings, suppressions."""
