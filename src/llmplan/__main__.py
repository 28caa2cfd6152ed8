"""``python -m llmplan`` is the command-line interface (same as ``llmplan-cli``)."""

try:
    from llmplan.cli import main
except KeyboardInterrupt:  # Ctrl-C before main() has started
    raise SystemExit(130) from None

raise SystemExit(main())
