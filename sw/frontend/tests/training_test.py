"""fit/evaluate on the simulated TPU (model backend): the loss falls on real Fashion-MNIST, the epoch lines
have Keras's form, a stopped and resumed run continues exactly as an uninterrupted one, and the device's
training steps follow XLA on the CPU."""

import io
import os
import re
import signal

import jax
import numpy as np
import optax
import pytest

import tpusim
from tpusim import data, models, parity

CONFIG = os.environ.get("TPU_CONFIG", "tiny")


@pytest.fixture(scope="module")
def fashion():
    return data.load_fashion_mnist()


def small_model(seed=0, out=None):
    return tpusim.Model(models.MLP(hidden=(32,)), optax.adam(3e-3), backend="model", config=CONFIG, seed=seed,
                        out=out or io.StringIO())


def test_fit_loss_falls_and_prints_keras_lines(fashion):
    (x, y), (x_test, y_test) = fashion
    out = io.StringIO()
    model = small_model(out=out)
    history = model.fit(x[:1024], y[:1024], epochs=2, batch_size=64, validation_data=(x_test[:200], y_test[:200]))
    assert history["loss"][1] < history["loss"][0] < 2.4
    assert np.mean(model.step_losses[-4:]) < np.mean(model.step_losses[:4]) - 0.3
    assert history["val_sparse_categorical_accuracy"][1] > 0.5
    lines = out.getvalue().splitlines()
    assert lines[0] == "Epoch 1/2" and lines[2] == "Epoch 2/2"
    pattern = (r"^16/16 \[={30}\] - \d+s \d+(ms|us|s)/step - device \d+(ms|us|s)/step - loss: \d\.\d{4} - "
               r"sparse_categorical_accuracy: \d\.\d{4} - val_loss: \d\.\d{4} - "
               r"val_sparse_categorical_accuracy: \d\.\d{4}$")
    assert re.match(pattern, lines[1]), lines[1]
    assert model.train_step.last_counters["cycles"] > 0
    loss, accuracy = model.evaluate(x_test[:200], y_test[:200], batch_size=64, verbose=0)
    assert loss == pytest.approx(history["val_loss"][1], rel=1e-6)
    assert accuracy == pytest.approx(history["val_sparse_categorical_accuracy"][1])


def test_evaluate_counts_a_partial_last_batch_once(fashion):
    (x, y), _ = fashion
    model = small_model()
    model.init(x[:64])
    loss_all, accuracy_all = model.evaluate(x[:100], y[:100], batch_size=64, verbose=0)
    loss_a, accuracy_a = model.evaluate(x[:50], y[:50], batch_size=64, verbose=0)
    loss_b, accuracy_b = model.evaluate(x[50:100], y[50:100], batch_size=64, verbose=0)
    assert loss_all == pytest.approx((loss_a + loss_b) / 2, rel=1e-5)
    assert accuracy_all == pytest.approx((accuracy_a + accuracy_b) / 2)


def test_resumed_run_continues_exactly(fashion, tmp_path):
    (x, y), _ = fashion
    x, y = x[:256], y[:256]
    uninterrupted = small_model()
    uninterrupted.fit(x, y, epochs=2, batch_size=32)
    assert len(uninterrupted.step_losses) == 16

    path = str(tmp_path / "ckpt.npz")
    first = small_model()
    first.fit(x, y, epochs=2, batch_size=32, checkpoint_path=path, stop_after_steps=5)
    assert first.position.global_step == 5 and os.path.exists(path)
    resumed = small_model()
    resumed.fit(x, y, epochs=2, batch_size=32, checkpoint_path=path)
    assert first.step_losses + resumed.step_losses == uninterrupted.step_losses
    for a, b in zip(jax.tree_util.tree_leaves(resumed.state()), jax.tree_util.tree_leaves(uninterrupted.state())):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_checkpoint_of_another_model_is_refused(fashion, tmp_path):
    (x, y), _ = fashion
    path = str(tmp_path / "ckpt.npz")
    small_model().fit(x[:64], y[:64], epochs=1, batch_size=32, checkpoint_path=path)
    other = tpusim.Model(models.MLP(hidden=(16,)), optax.adam(1e-3), config=CONFIG, out=io.StringIO())
    with pytest.raises(ValueError, match=r"array 0 is float32\[32\], the model has float32\[16\]"):
        other.fit(x[:64], y[:64], epochs=1, batch_size=32, checkpoint_path=path)


def test_device_training_steps_follow_the_cpu():
    # v2: the MLP's step with three bf16 passes per dot is larger than tiny's IMEM.
    device_losses, cpu_losses, device_params, cpu_params = parity.run("mlp", 3, batch_size=32, config="v2")
    loss_diff, param_diff = parity.relative_differences(device_losses, cpu_losses, device_params, cpu_params)
    assert loss_diff <= 1e-3
    assert param_diff <= 1e-2


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_moves_on_a_terminal(fashion):
    (x, y), _ = fashion
    out = Terminal()
    small_model(out=out).fit(x[:128], y[:128], epochs=1, batch_size=32)
    redraws = out.getvalue().split("\r")
    assert len(redraws) >= 3  # at least a first step, the last step, and the final line
    assert re.match(r"^1/4 \[=*>?\.+\] - ETA: \d+s - device ", redraws[1]), redraws[1]
    assert re.match(r"^4/4 \[={30}\] - \d+s ", redraws[-1]), redraws[-1]
    assert out.getvalue().endswith("\n")


class InterruptingTerminal(Terminal):
    """A terminal whose user presses Ctrl-C while the first step's progress is drawn."""

    def __init__(self):
        super().__init__()
        self.draws = 0

    def write(self, text):
        if text.startswith("\r"):
            self.draws += 1
            if self.draws == 1:
                os.kill(os.getpid(), signal.SIGINT)
        return super().write(text)


def test_ctrl_c_finishes_the_step_saves_and_resumes_exactly(fashion, tmp_path):
    (x, y), _ = fashion
    x, y = x[:256], y[:256]
    uninterrupted = small_model()
    uninterrupted.fit(x, y, epochs=1, batch_size=32)

    path = str(tmp_path / "ckpt.npz")
    out = InterruptingTerminal()
    first = small_model(out=out)
    first.fit(x, y, epochs=1, batch_size=32, checkpoint_path=path)
    assert first.interrupted and first.position.global_step == 1
    assert "Interrupted: finishing the current step" in out.getvalue()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is restored
    first.state()  # the donated parameters came back: still readable
    resumed = small_model()
    resumed.fit(x, y, epochs=1, batch_size=32, checkpoint_path=path)
    assert not resumed.interrupted
    assert first.step_losses + resumed.step_losses == uninterrupted.step_losses


def test_step_report_prints_the_step_and_matches_the_cpu(capsys):
    from tpusim import step_report
    assert step_report.main(["--model", "mlp", "--config", CONFIG, "--batch-size", "16"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    fields = dict(item.split("=", 1) for item in line.split()[1:])
    assert line.startswith("step model=mlp framework=flax")
    assert int(fields["cycles"]) > 0 and int(fields["instruction_words"]) > 0
    # The MLP's parameters alone are 784*256 + 256*128 + 128*10 f32 (plus Adam's two moments).
    assert int(fields["hbm_bytes"]) > 3 * 4 * (784 * 256 + 256 * 128 + 128 * 10)
    assert 0 < float(fields["mxu_util_pct"]) <= 100
    assert float(fields["rel_loss_diff"]) < 1e-3


def test_fit_profiles_the_step_asked_for(tmp_path):
    """profile_step runs that step with the issue trace on: the op profile adds up to the step's cycles,
    the findings name the padding of the 10-class layer, the trace is JSON and the report is written."""
    import json
    (x, y), _ = data.load_fashion_mnist()
    out = io.StringIO()
    model = tpusim.Model(models.MLP(), optax.adam(1e-3), config=CONFIG, out=out)
    model.fit(x[:48], y[:48], epochs=1, batch_size=16, verbose=0, profile_step=1, profile_dir=str(tmp_path))
    profile = model.profile
    assert profile is not None
    assert sum(op["cycles"] for op in profile.ops) == profile.cycles > 0
    assert any(op["category"] == "dot" and op["mxu_rows"] > 0 for op in profile.ops)
    text = out.getvalue()
    assert "Profile of step 1" in text and "[padding]" in text, text
    trace = json.loads((tmp_path / "step1.trace.json").read_text())
    names = {e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {"HLO operations", "DMA", "MXU", "VPU"} <= names
    assert "<svg" in (tmp_path / "step1.html").read_text()


def test_steps_per_execution_runs_a_device_loop_with_the_same_weights(fashion):
    (x, y), _ = fashion
    x, y = x[:352], y[:352]  # 11 batches of 32: two loops of 4 steps and one of 3
    one = small_model()
    one.fit(x, y, epochs=1, batch_size=32)
    out = io.StringIO()
    looped = tpusim.Model(models.MLP(hidden=(32,)), optax.adam(3e-3), backend="model", config=CONFIG, seed=0,
                          out=out, steps_per_execution=4)
    looped.fit(x, y, epochs=1, batch_size=32)
    assert looped.step_losses == one.step_losses
    for a, b in zip(jax.tree_util.tree_leaves(one.state()), jax.tree_util.tree_leaves(looped.state())):
        assert np.array_equal(a, b)
    assert sorted(key[0] for key in looped._train_loops) == [3, 4]
    assert looped.last_execution_steps == 3 and looped.last_execution_cycles > 0
    loop = looped._train_loops[(4, (32, 28, 28), (32,))]
    # One while loop holding infeed and outfeed, as XLA receives it.
    for op in ("while(", "infeed(", "outfeed(", "after-all()"):
        assert op in loop.last_hlo_text, op
    assert re.match(r"^11/11 \[={30}\]", out.getvalue().splitlines()[1])
    assert looped.client.infeed_queue_size() == 0 and looped.client.outfeed_queue_size() == 0


def test_ctrl_c_finishes_the_running_loop_and_stops_between_executions(fashion):
    (x, y), _ = fashion
    out = InterruptingTerminal()
    model = tpusim.Model(models.MLP(hidden=(32,)), optax.adam(3e-3), backend="model", config=CONFIG, seed=0,
                         out=out, steps_per_execution=3)
    model.fit(x[:320], y[:320], epochs=1, batch_size=32)
    assert model.interrupted and model.position.global_step == 3
    assert "Interrupted: finishing the current loop of up to 3 steps" in out.getvalue()


def test_infeed_refuses_a_type_the_tpu_infeed_does_not_take():
    with pytest.raises(TypeError, match="DataType float16 is not a supported TPU infeed type."):
        tpusim.feeds.infeed([jax.ShapeDtypeStruct((8,), np.float16)])
    client = tpusim.get_client("model", CONFIG)
    with pytest.raises(tpusim.TpuTypeError, match="DataType u8 is not a supported TPU infeed type."):
        client.transfer_to_infeed([np.zeros(4, np.uint8)])
    with pytest.raises(tpusim.NotFoundError, match="outfeed queue of TPU:0 is empty"):
        client.transfer_from_outfeed()
