"""The one error type for "the grader could not do this"."""


class GraderError(Exception):
    """The grader itself could not do what was asked.

    The message is one line that says what was wrong and what to do next; the command-line
    interface prints it and exits with status 2. A learner's mistake is never a GraderError:
    it is a score and a feedback message in the report.
    """
