"""The training-time budget of a run (--max_train_minutes): whether it is used up, and what to say when it is.

Training time is the training loop's wall time summed over the run's sessions, as its checkpoints record it
(their `train_seconds`): a restart goes on from the time of the checkpoint it resumes. The time a killed session
spent after its last checkpoint left no weights behind and is not counted.
"""


class TimeBudget:
    """At most `minutes` of training time (None: no limit)."""

    def __init__(self, minutes=None):
        self.minutes = minutes

    def used_up(self, train_seconds):
        """True when `train_seconds` of training time reach the budget."""
        return self.minutes is not None and train_seconds >= self.minutes * 60

    def stop_message(self, step, train_seconds, trained):
        """The log line of a run that ends training at `step` for want of time; `trained`: whether this session
        trained any step before."""
        spent = f"{train_seconds / 60:.2f} minutes of training reach --max_train_minutes={self.minutes:g}"
        if trained:
            return f"{spent} at step {step}: training ends with this step's checkpoint"
        return f"{spent} (the run's checkpoint at step {step}): no further training"
