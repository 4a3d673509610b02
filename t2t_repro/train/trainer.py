"""The training loop: orchestrates model, optimizer, input, checkpoints and summaries for one run.

It owns no algorithm (the step is `TrainStep`, batching is `token_batches`, the schedule and optimizer are
`make_optimizer`) and knows no run directory: the run layer (`t2t_repro.run`) hands it the hparams, the
problem, the directories to write and a dev-evaluation callback.
"""

import math
import os
import time

import keras
import tensorflow as tf

from t2t_repro.data.batching import token_batches
from t2t_repro.errors import UserError, first_line
from t2t_repro.model import build_transformer
from t2t_repro.model.cpu_kernels import check_compute_kernels
from t2t_repro.train.checkpoints import (
    RESTORE_ERRORS, all_finite, checkpoint_prefixes, checkpoint_step, damage_details, keep_aside,
    read_index, remove_write_leftovers, restore_newest, write_index,
)
from t2t_repro.train.devices import device_summary
from t2t_repro.train.optimizer import make_optimizer
from t2t_repro.train.options import DEFAULT_DEVICE_BATCH_TOKENS
from t2t_repro.train.precision import (
    configure_tf32, inner_optimizer, loss_scale_state, precision_line, with_loss_scaling,
)
from t2t_repro.train.step import TrainStep
from t2t_repro.train.strategy import is_chief, make_strategy, worker_position
from t2t_repro.train.time_budget import TimeBudget
from t2t_repro.train.warm_start import restore_warm_start

# Under float16 an update whose gradients overflow is skipped and the loss scale lowered; a loss that is itself
# non-finite this many updates in a row is not an overflow the scale can cure, and stops the run.
NON_FINITE_LOSS_PATIENCE = 10
# What TensorFlow says when a checkpointed input position does not fit the input pipeline built now.
INPUT_PIPELINE_CHANGED = "Make sure the dataset definition has not changed"

def default_checkpoint_steps(hparams):
    """Steps between checkpoints besides the 10-minute clock: about four averaging windows over the run.

    On the paper's runs the 10-minute clock saves far more often (base: 5,000 steps are ~33 minutes); a
    short run that ends before 10 minutes still leaves checkpoints from its last part to average."""
    return max(1, hparams.train_steps // (4 * hparams.checkpoint_average_count))


def accumulation_steps(options, hparams, replicas):
    """Micro-batches per replica per update: explicit, or enough to reach the global batch on these devices."""
    batch_tokens = options.batch_tokens or hparams.batch_tokens
    if options.gradient_accumulation != "auto":
        try:
            steps = int(options.gradient_accumulation)
        except ValueError:
            steps = 0
        if steps < 1:
            raise UserError(f"--gradient_accumulation={options.gradient_accumulation}: expected auto or a count >= 1")
        return steps
    device_tokens = options.device_batch_tokens or max(DEFAULT_DEVICE_BATCH_TOKENS, hparams.max_length)
    return max(1, math.ceil(batch_tokens / (replicas * device_tokens)))


def random_state(model, by_name=False):
    """The model's random state (dropout's seed generators) as the checkpoint holds it: keyed by position in
    the model, which is the same in every process; `by_name`: keyed by variable name, as checkpoints written
    before held it (Keras numbers the names per process, so those resume only in a fresh process)."""
    variables = model.non_trainable_variables
    return {v.path: v for v in variables} if by_name else {str(i): v for i, v in enumerate(variables)}


class Trainer:
    """Trains (or resumes) one model for `hparams` on a problem's train split.

    The strategy is made first: multi-worker collectives must be configured before TensorFlow runs any op.

    Args:
        hparams: the resolved HParams (hparams.train_steps is the last step).
        problem: the Problem whose train split is read.
        options: `t2t_repro.train.options.TrainingOptions`.
    """

    # The clock training time is read from (seconds); a test may give the class a fake one.
    clock = staticmethod(time.monotonic)

    def __init__(self, hparams, problem, options):
        self.hparams = hparams
        self.problem = problem
        self.options = options
        self.strategy = make_strategy(options.strategy, options.tpu)
        configure_tf32(hparams.tf32)
        check_compute_kernels(hparams.precision)  # before data generation, which may take hours
        self.device = device_summary(self.strategy)
        keras.utils.set_random_seed(options.seed)
        self.chief = is_chief(self.strategy)
        self.workers, self.worker_index = worker_position(self.strategy)
        replicas = self.strategy.num_replicas_in_sync
        self.accumulation = accumulation_steps(options, hparams, replicas)
        self.batch_tokens = options.batch_tokens or hparams.batch_tokens
        self.micro_batch_tokens = self.batch_tokens // (replicas * self.accumulation)
        self.checkpoint_steps = options.checkpoint_steps or default_checkpoint_steps(hparams)
        self.best = None  # the chief's BestCheckpoint, given to `train`
        if options.early_stopping and self.workers > 1:
            raise UserError("--early_stopping is decided by the chief's dev evaluations, which the other workers do "
                            "not see: it cannot be used with several workers")
        if options.max_train_minutes is not None and self.workers > 1:
            raise UserError("--max_train_minutes is read from each worker's own clock, on which they could stop at "
                            "different steps: it cannot be used with several workers")
        if self.micro_batch_tokens < hparams.max_length:
            raise UserError(
                f"a micro-batch of {self.micro_batch_tokens} tokens ({self.batch_tokens} over {replicas} replicas x "
                f"{self.accumulation} micro-batches) cannot hold a pair of max_length={hparams.max_length}"
            )

    def prepare(self, data_dir, checkpoint_dir, warm_start=None):
        """Builds model, optimizer, input and checkpoint manager over `checkpoint_dir`; the optimizer counts as
        `warm_start` says (a `WarmStart`, or None)."""
        self.vocabularies = self.problem.vocabularies(data_dir)
        offsets = (warm_start.schedule_offset, warm_start.adam_offset) if warm_start else (0, 0)
        with self.strategy.scope():
            self.model = build_transformer(self.hparams, **self.vocabularies.model_sizes())
            self.optimizer = with_loss_scaling(make_optimizer(self.hparams, *offsets), self.hparams.precision)
            self.optimizer.build(self.model.trainable_variables)
            self.skipped_steps = tf.Variable(0, dtype=tf.int64, trainable=False)
        train = self.problem.dataset("train", data_dir, self.hparams.max_length, (self.workers, self.worker_index))
        self.batches = token_batches(
            train, self.micro_batch_tokens, self.hparams.max_length, shuffle=True, seed=self.options.seed,
            repeat=True, bucket_growth=self.hparams.bucket_growth,
        )
        self.iterator = iter(self.batches)
        # Dropout's random state lives in non-trainable seed-generator variables; saving them makes resume exact.
        rng_state = random_state(self.model)
        # Training time summed over every session of the run (for Table 2's cost estimate).
        self.train_seconds = tf.Variable(0.0, dtype=tf.float64, trainable=False)
        # The optimizer's own state is the same in every precision, so that checkpoints interchange; float16
        # runs add their loss scale and count of skipped updates.
        state = dict(model=self.model, optimizer=inner_optimizer(self.optimizer), data=self.iterator, rng=rng_state,
                     train_seconds=self.train_seconds)
        self.loss_scale = loss_scale_state(self.optimizer)
        if self.loss_scale:
            state["loss_scale"] = {**self.loss_scale, "skipped_steps": self.skipped_steps}
        if self.best is not None:  # the best dev score so far and the evaluations since (early stopping)
            state["best"] = self.best.state
        self.checkpoint_state = state
        self.checkpoint = tf.train.Checkpoint(**state)
        if not self.chief:  # every worker saves (it may take part in collectives); only the chief's count
            checkpoint_dir = os.path.join(checkpoint_dir, f"worker-{self.worker_index}")
        self.checkpoint_dir = checkpoint_dir
        self.step_fn = TrainStep(
            self.model, self.optimizer, self.strategy, self.hparams.label_smoothing, self.accumulation,
            jit_compile=self.options.xla,
        )

    def environment(self):
        """What this session trains on and how, for run.json and report.json."""
        return {
            "device_kind": self.device["type"],
            "device_name": self.device["name"],
            "compute_capability": self.device["compute_capability"],
            "devices": self.strategy.num_replicas_in_sync,
            "micro_batch_tokens": self.micro_batch_tokens,
            "training_precision": self.hparams.precision,  # "precision" is a parsing score in report.json
            "tf32": self.hparams.tf32,
            "xla": self.options.xla,
        }

    @property
    def step(self):
        return int(self.optimizer.iterations.numpy())

    def _weights_finite(self):
        """True when every floating-point variable of the model and the optimizer is finite."""
        return all_finite(self.model.variables + self.optimizer.variables)

    def _restore_newest(self, prefixes):
        """Restores the newest of `prefixes` that restores and holds finite weights (`restore_newest`);
        returns it (None: there were none) and the newer ones that are damaged, as [(prefix, what is wrong)].
        A checkpoint that reads but does not fit the model is a UserError (the run directory holds another
        run), and so is a directory where every checkpoint is damaged."""

        def mismatch(prefix, error):
            return UserError(f"cannot resume from {prefix}: {first_line(error)}")

        latest, damaged = restore_newest(prefixes, self._restore_from, self._weights_finite, mismatch)
        if latest is None and damaged:
            raise UserError(f"no checkpoint in {self.checkpoint_dir} restores ({damage_details(damaged)}); move "
                            "them away to train afresh")
        return latest, damaged

    def _restore_from(self, prefix):
        """Restores `prefix`. Without the loss scale when a float16 run resumes a checkpoint of another
        precision (the hparams check lets that happen only when the user asks), whose scale restarts. Without
        the input position when it was saved by another version of the input pipeline, which cannot read it:
        the input then starts again from the beginning of its (seeded) order, and says so."""
        state = dict(self.checkpoint_state)
        try:
            names = [name for name, _ in tf.train.list_variables(prefix)]
        except RESTORE_ERRORS:
            names = None  # damaged: restoring it reports the damage
        if names is not None:
            if "loss_scale" in state and not any(name.startswith("loss_scale/") for name in names):
                del state["loss_scale"]
            if "best" in state and not any(name.startswith("best/") for name in names):
                del state["best"]  # saved before best checkpoints existed: no best known yet
            if any(name.startswith("rng/seed_generator") for name in names):
                state["rng"] = random_state(self.model, by_name=True)
        try:
            tf.train.Checkpoint(**state).restore(prefix).assert_existing_objects_matched()
        except RESTORE_ERRORS as error:
            if INPUT_PIPELINE_CHANGED not in str(error):
                raise
            del state["data"]
            tf.train.Checkpoint(**state).restore(prefix).expect_partial().assert_existing_objects_matched()
            # The failed read may have left the iterator anywhere: a fresh one, which the checkpoints save.
            self.iterator = self.checkpoint_state["data"] = iter(self.batches)
            self.checkpoint = tf.train.Checkpoint(**self.checkpoint_state)
            print(f"{os.path.basename(prefix)} holds an input position saved by another version of the input "
                  "pipeline: model and optimizer resume, the input starts again from the beginning", flush=True)

    def restore(self, warm_start=None):
        """Resumes from the newest checkpoint present that restores; damaged newer ones are moved aside (not
        deleted), a lost or damaged `checkpoint` index file is rebuilt from the files present, and leftovers of
        an interrupted checkpoint write are removed. Then makes the checkpoint manager. A run with no checkpoint
        of its own starts from `warm_start` (a `WarmStart`) when given: a restart resumes its own."""
        directory = self.checkpoint_dir
        for leftover in remove_write_leftovers(directory):
            print(f"removed {leftover}, left by an interrupted checkpoint write", flush=True)
        latest, damaged = self._restore_newest(checkpoint_prefixes(directory, complete=False))
        try:
            for prefix, damage in damaged:
                print(f"checkpoint {prefix} is damaged ({damage}): kept aside in {keep_aside(prefix)}", flush=True)
            last_step = checkpoint_step(latest) if latest else -1
            kept = [p for p in checkpoint_prefixes(directory) if checkpoint_step(p) <= last_step]
            index = read_index(directory)
            if index is None and kept:
                print(f"rebuilt the checkpoint index of {directory} from the checkpoint files present", flush=True)
            if index is None or [os.path.basename(p) for p in index] != [os.path.basename(p) for p in kept]:
                write_index(directory, kept)
        except OSError as error:
            raise UserError(f"cannot repair the checkpoints in {directory}: {error}") from None
        keep = self.options.keep_checkpoints or max(self.hparams.checkpoint_average_count, 1)
        self.manager = tf.train.CheckpointManager(self.checkpoint, directory, max_to_keep=keep)
        if latest:
            print(f"resumed from {latest} at step {self.step}", flush=True)
        elif warm_start:
            restore_warm_start(warm_start, self.checkpoint_state, self.optimizer)
            print(warm_start.describe(), flush=True)

    def _stopped(self, reason):
        last = self.manager.latest_checkpoint or "none"
        return UserError(f"{reason}; stopped. Last good checkpoint: {last}")

    def save(self):
        if not self._weights_finite():
            raise self._stopped(f"weights became non-finite (NaN or Inf) at step {self.step}, not saved")
        now = self.clock()
        self.train_seconds.assign_add(now - self._clock)
        self._clock = now
        try:
            path = self.manager.save(checkpoint_number=self.step)
        except (tf.errors.OpError, OSError) as error:
            raise self._stopped(f"could not write a checkpoint at step {self.step} ({first_line(error)})") from None
        return path

    def _log(self, writer, step, loss, rate):
        learning_rate = float(self.optimizer.learning_rate)
        scaling = {}
        if self.loss_scale:
            scaling = {
                "loss_scale": float(self.loss_scale["scale"].numpy()),
                "skipped_steps": int(self.skipped_steps.numpy()),
            }
        print(
            f"step {step}/{self.hparams.train_steps}  loss {loss:.4f}  lr {learning_rate:.3g}  "
            f"{rate:,.0f} target tokens/s" + "".join(f"  {name} {value:g}" for name, value in scaling.items()),
            flush=True,
        )
        if writer:
            with writer.as_default(step=step):
                tf.summary.scalar("loss", loss)
                tf.summary.scalar("learning_rate", learning_rate)
                tf.summary.scalar("target_tokens_per_s", rate)
                for name, value in scaling.items():
                    tf.summary.scalar(name, value)

    def _check_loss(self, loss, previous_step, non_finite_run):
        """The number of non-finite losses in a row after this update; stops the run on a non-finite loss,
        except under float16 while the updates it skips (counted in skipped_steps) may yet recover."""
        skipped = self.step == previous_step
        if skipped:
            self.skipped_steps.assign_add(1)
        if math.isfinite(loss):
            return 0
        non_finite_run += 1
        if not (self.loss_scale and skipped) or non_finite_run >= NON_FINITE_LOSS_PATIENCE:
            in_a_row = f" ({non_finite_run} updates in a row)" if self.loss_scale else ""
            raise self._stopped(f"loss became {loss} at step {self.step}{in_a_row}")
        return non_finite_run

    def _training_seconds(self):
        """The run's training time so far: what its last checkpoint recorded and this session's time since."""
        return float(self.train_seconds.numpy()) + self.clock() - self._clock

    def _early_stopped(self):
        """True (and says so) when the patience of options.early_stopping is used up."""
        if self.best is None or not self.best.exhausted:
            return False
        print(self.best.stop_message(self.step), flush=True)
        return True

    def train(self, data_dir, checkpoint_dir, summary_dir=None, evaluate=None, description="", best=None,
              warm_start=None):
        """Trains up to hparams.train_steps updates, or until early stopping or the end of
        options.max_train_minutes (`TimeBudget`); returns statistics of this session's training.

        Args:
            data_dir: where the problem's data is.
            checkpoint_dir: where checkpoints go (the chief's; other workers use a subdirectory).
            summary_dir: TensorBoard training summaries (chief only; None: none).
            evaluate: `evaluate(step, model)` called every options.eval_steps steps and at the end (chief only);
                it returns the step's `DevScore` (or None).
            description: what is trained, for the first log line.
            best: a `BestCheckpoint` that each DevScore updates, saved with the checkpoints (chief only).
            warm_start: a `WarmStart` the run starts from when it has no checkpoint of its own (None: random
                weights), and whose counts it keeps on every restart.
        """
        options = self.options
        self.best = best if self.chief else None
        self.prepare(data_dir, checkpoint_dir, warm_start)
        self.restore(warm_start)
        writer = tf.summary.create_file_writer(summary_dir) if self.chief and summary_dir else None
        evaluate = evaluate if self.chief else None
        print(precision_line(self.hparams, self.device) + (", XLA" if options.xla else ""), flush=True)
        print(
            f"training {description}: {self.model.count_params():,} parameters, "
            f"{self.strategy.num_replicas_in_sync} replica(s) x {self.accumulation} micro-batch(es) of "
            f"{self.micro_batch_tokens} tokens, {self.hparams.train_steps} steps",
            flush=True,
        )
        last_step = self.hparams.train_steps
        start = self._clock = window_start = self.clock()  # save() moves _clock to its own time
        window_tokens = total_tokens = 0.0
        non_finite_run = 0
        stopped = self._early_stopped()  # a resumed run whose patience was used up does not train on
        budget = TimeBudget(options.max_train_minutes)
        out_of_time = budget.used_up(self._training_seconds())  # as a restart whose time is used up
        if out_of_time and self.step < last_step:
            print(budget.stop_message(self.step, self._training_seconds(), trained=False), flush=True)
        while self.step < last_step and not stopped and not out_of_time:
            previous_step = self.step
            loss, tokens = self.step_fn(self.iterator)
            loss = float(loss)
            non_finite_run = self._check_loss(loss, previous_step, non_finite_run)
            if self.step == previous_step:
                continue
            window_tokens += float(tokens)
            total_tokens += float(tokens)
            step = self.step
            out_of_time = budget.used_up(self._training_seconds())
            final = step == last_step or out_of_time
            if step % options.log_steps == 0 or final:
                self._log(writer, step, loss, window_tokens / max(self.clock() - window_start, 1e-9))
                window_tokens, window_start = 0.0, self.clock()
            # Evaluated before the checkpoint of the same step is saved, so that it holds this evaluation's
            # outcome (the best score and the patience count); evaluation changes no training state.
            if evaluate and (step % options.eval_steps == 0 or final):
                score = evaluate(step, self.model)
                if self.best is not None and score is not None:
                    self.best.update(step, score, self.model)
                    stopped = self._early_stopped()
            if out_of_time and step < last_step:
                print(budget.stop_message(step, self._training_seconds(), trained=True), flush=True)
            due_by_time = self.clock() - self._clock >= options.checkpoint_minutes * 60
            if due_by_time or step % self.checkpoint_steps == 0 or final or stopped:
                self.save()
        if self.manager.latest_checkpoint is None or checkpoint_step(self.manager.latest_checkpoint) != self.step:
            self.save()
        session_seconds = self.clock() - start
        return {
            "steps": self.step,
            "train_seconds": float(self.train_seconds.numpy()),
            "target_tokens_per_s": total_tokens / session_seconds if total_tokens else None,
            **self.environment(),
            "skipped_steps": int(self.skipped_steps.numpy()),
            "accumulation_steps": self.accumulation,
            "stopped_early": stopped,
            "max_train_minutes": options.max_train_minutes,
            "stopped_by_time": out_of_time and self.step < last_step,
        }
