"""Trusted-side implementations that hidden tests hand to the learner's code as black boxes.

The hidden functions a diagnose exercise is graded on (and the reference answers they are built
from) live here, one module per notebook. The sandbox never imports this package
(:data:`grader.sandbox.child.ALLOWED_GRADER_MODULES` leaves it out), the confined learner's filesystem
view does not hold it, and the starter repository does not ship it: a test passes its functions as
``student.black_box(function, signature)`` (:class:`grader.sandbox.codec.BlackBox`), so the learner's
code can call them across the process boundary, and do nothing else with them.
"""
