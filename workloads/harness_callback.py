# workloads/harness_callback.py: a transformers TrainerCallback that prints the harness's line
# protocol v1 (docs/workloads.md) from any Trainer-based script, so `harness exec` records it.
"""Add to a Trainer script:

    from harness_callback import HarnessCallback
    trainer = Trainer(..., callbacks=[HarnessCallback()])

Set logging_steps=1 in TrainingArguments: Trainer's logged loss is the mean over the logging
interval, so only then is each HARNESS_STEP line the loss of that one step. The callback prints
one HARNESS_META line when training begins (device, versions) and one HARNESS_STEP line per
Trainer log that has a loss: step, loss, grad_norm, lr, tokens (the interval's, when Trainer
counts input tokens, else per_device_batch x seq_len x world size if given), step_ms (the wall
time of the interval's training steps / steps, each timed from on_step_begin to on_step_end
after a device synchronise: evaluation and checkpoint saves between steps are not in it),
tokens/s, and the device's peak and total memory. The device is
the one the model's parameters are on when training begins (HarnessCallback(device=...) names
it instead): a model trained on the CPU of a GPU host reports the CPU, never the GPU.

A sparse mixture-of-experts model (Mixtral and its kin) trained with output_router_logits=True
also gets "expert_tokens" in each HARNESS_STEP: for every MoE layer the tokens the router sent to
each expert, from the router logits the model returns (softmax in float32, then torch.topk with
num_experts_per_tok, as transformers' router does), summed over the training forwards since the
previous logged step (with logging_steps=1 and no gradient accumulation: the step's forward).
"""
import json
import sys
import os
import platform
import time

from transformers import TrainerCallback


def device_module(torch, device=None):
    """(module, index) of the accelerator the training runs on: torch.cuda, torch.musa,
    torch.npu, torch.xpu; (None, None) on the CPU. device (a torch.device or its name, "cpu",
    "cuda:1") is that device; None: the first accelerator torch has (the current one of it)."""
    if device is not None:
        dev = torch.device(device)
        mod = getattr(torch, dev.type, None) if dev.type != "cpu" else None
        if mod is None or not hasattr(mod, "max_memory_allocated"):
            return None, None  # the CPU (or a device torch keeps no memory figures for)
        return mod, dev.index if dev.index is not None else mod.current_device()
    for name in ("cuda", "musa", "npu", "xpu"):
        mod = getattr(torch, name, None)
        try:
            if mod is not None and mod.is_available():
                return mod, mod.current_device()
        except Exception:  # a plugin half installed: treated as absent
            continue
    return None, None


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory(torch, device=None):
    """(peak bytes, total bytes): the accelerator's max_memory_allocated and total memory, or on
    the CPU the process's peak resident size and the machine's physical memory. device: as
    device_module's."""
    mod, idx = device_module(torch, device)
    if mod is not None:
        return int(mod.max_memory_allocated(idx)), int(mod.get_device_properties(idx).total_memory)
    import resource
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return int(peak), int(total)


def describe_device(torch, device=None):
    """the HARNESS_META fields that say what ran where; device: as device_module's"""
    import transformers
    mod, idx = device_module(torch, device)
    meta = {"v": 1, "torch": torch.__version__, "transformers": transformers.__version__,
            "python": platform.python_version(), "host": platform.node()}
    if mod is not None:
        meta["device_name"] = mod.get_device_name(idx)
        meta["device_type"] = mod.__name__.split(".")[-1]
        if torch.version.cuda and meta["device_type"] == "cuda":
            meta["driver"] = "cuda " + torch.version.cuda
    else:
        meta["device_name"] = cpu_name()
        meta["device_type"] = "cpu"
        meta["torch_threads"] = torch.get_num_threads()
    meta["mem_total_bytes"] = memory(torch, device)[1]
    return meta


def expert_counts(torch, router_logits, top_k):
    """[[tokens per expert] per MoE layer] of one forward: each row's top_k experts of the
    softmax (float32) of its router logits, as transformers' MixtralTopKRouter picks them"""
    counts = []
    with torch.no_grad():
        for logits in router_logits:
            probs = torch.nn.functional.softmax(logits.detach().float(), dim=-1)
            chosen = torch.topk(probs, top_k, dim=-1).indices.reshape(-1)
            counts.append(torch.bincount(chosen, minlength=logits.shape[-1]).tolist())
    return counts


def emit(tag, fields):
    # one write of the whole line, newline included: print() writes the text and its newline
    # apart when Python runs unbuffered (as harness exec runs it), and the ranks of a torchrun
    # sharing one pipe then interleave into lines holding two ranks' steps
    sys.stdout.write(tag + " " + json.dumps(fields, separators=(",", ":")) + "\n")
    sys.stdout.flush()


class HarnessCallback(TrainerCallback):
    """Prints HARNESS_META at train begin and HARNESS_STEP at each Trainer log with a loss."""

    def __init__(self, tokens_per_step=None, rank=None, device=None):
        import torch
        self.torch = torch
        self.given_device = device  # None: the model's, when training begins
        self.device = device
        self.tokens_per_step = tokens_per_step
        self.rank = int(os.environ.get("RANK", "0")) if rank is None else rank
        self.last_time = None
        self.step_began = None  # perf_counter() at the current step's on_step_begin
        self.train_s = 0.0  # training steps' wall time since the last logged step
        self.timed_steps = 0  # how many steps train_s holds
        self.last_step = 0
        self.last_tokens = None
        self.expert_tokens = None  # summed since the last logged step; None: no MoE counts
        self.top_k = None

    def watch_routing(self, model):
        """counts the experts of every training forward when the model returns router logits"""
        config = getattr(model, "config", None)
        top_k = getattr(config, "num_experts_per_tok", None)
        if not top_k or not getattr(config, "output_router_logits", False):
            return
        self.top_k = int(top_k)
        model.register_forward_hook(self.on_forward)

    def on_forward(self, module, inputs, output):
        logits = getattr(output, "router_logits", None)
        if not module.training or not logits:
            return
        counts = expert_counts(self.torch, logits, self.top_k)
        if self.expert_tokens is None:
            self.expert_tokens = counts
        else:
            self.expert_tokens = [[a + b for a, b in zip(x, y)]
                                  for x, y in zip(self.expert_tokens, counts)]

    def training_device(self, args, model):
        """the device the training runs on: the one given, else the model's parameters', else
        the Trainer's (args.device)"""
        if self.given_device is not None:
            return self.given_device
        try:
            return next(model.parameters()).device
        except (AttributeError, StopIteration, TypeError):
            return getattr(args, "device", None)

    def on_train_begin(self, args, state, control, **kwargs):
        self.device = self.training_device(args, kwargs.get("model"))
        meta = describe_device(self.torch, self.device)
        meta["world_size"] = args.world_size
        meta["rank"] = self.rank
        meta["workload"] = "workloads/harness_callback.py"  # recorded_by is the recorder's
        emit("HARNESS_META", meta)
        if kwargs.get("model") is not None:
            self.watch_routing(kwargs["model"])
        self.last_time = time.perf_counter()
        self.last_step = state.global_step
        self.last_tokens = getattr(state, "num_input_tokens_seen", None)

    def synchronize(self):
        """waits for the training device's queued work (the CPU: nothing to wait for)"""
        mod, idx = device_module(self.torch, self.device)
        if mod is not None and hasattr(mod, "synchronize"):
            mod.synchronize(idx)

    def on_step_begin(self, args, state, control, **kwargs):
        self.synchronize()  # work queued before (an evaluation) is not this step's
        self.step_began = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        if self.step_began is None:
            return
        self.synchronize()
        self.train_s += time.perf_counter() - self.step_began
        self.timed_steps += 1
        self.step_began = None

    def interval_step_ms(self, steps, now):
        """the mean wall time of the interval's training steps; without step callbacks (the
        callback driven by hand) the interval's wall time / steps"""
        if self.timed_steps:
            return self.train_s * 1000.0 / self.timed_steps
        return (now - self.last_time) * 1000.0 / steps

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or "loss" not in logs or state.global_step <= self.last_step:
            return
        now = time.perf_counter()
        steps = state.global_step - self.last_step
        step_ms = self.interval_step_ms(steps, now)
        self.train_s, self.timed_steps = 0.0, 0
        seen = getattr(state, "num_input_tokens_seen", None)
        if seen and self.last_tokens is not None and seen > self.last_tokens:
            tokens = (seen - self.last_tokens) // steps
        else:
            tokens = self.tokens_per_step
        peak, total = memory(self.torch, self.device)
        line = {"v": 1, "step": state.global_step, "loss": float(logs["loss"]), "step_ms": step_ms,
                "mem_peak_bytes": peak, "mem_total_bytes": total, "rank": self.rank}
        if logs.get("learning_rate") is not None:  # absent: not recorded (not a NaN)
            line["lr"] = float(logs["learning_rate"])
        if "grad_norm" in logs and logs["grad_norm"] is not None:
            line["grad_norm"] = float(logs["grad_norm"])
        if tokens:
            line["tokens"] = int(tokens)
            line["tokens_per_s"] = tokens / (step_ms / 1000.0) if step_ms > 0 else 0.0
        if self.expert_tokens is not None:
            line["expert_tokens"] = self.expert_tokens
            self.expert_tokens = None
        emit("HARNESS_STEP", line)
        self.last_time, self.last_step, self.last_tokens = now, state.global_step, seen
