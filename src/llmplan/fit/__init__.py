"""llmplan.fit: does a plan fit *this* machine, and what is the nearest change that makes it fit.

Above the plan pipeline: it re-points a plan at the detected hardware (``llmplan.hw``) and
evaluates it through ``llmplan.plan.evaluate``. ``local`` holds the types and entry points,
``trial`` one evaluation, ``verdict`` the layouts and limits, ``changes`` the change ladder.
"""
