"""The judge: the hidden suites (``suites/``) and their trusted implementations (``hidden/``), run
by pytest against a sandboxed learner through the student proxy (:func:`.proxy.run_suite`); the
recorded public values (:mod:`.recorded`), the suites' property strategies (:mod:`.properties`),
notebook 05's trusted language model (:mod:`.context_lm`) and the choice of notebooks by number
(:mod:`.selection`). Stands on :mod:`grader.sandbox`; knows nothing of classes or hosts.
"""
