#!/usr/bin/env python3
# tools/make_deepspeed_log.py: made tests/data/logs/deepspeed.log: a real DeepSpeed (CPU, gloo) run
# of the gpt2-tiny init weights, with Megatron-DeepSpeed's iteration line printed per step.
# usage: torchrun --nproc_per_node=1 tools/make_deepspeed_log.py INIT_DIR scenarios/data/corpus.txt
import logging, sys, time, torch, deepspeed
from deepspeed.utils import logger as ds_logger
ds_logger.setLevel(logging.INFO)
for h in ds_logger.handlers: h.setLevel(logging.INFO)
from transformers import GPT2LMHeadModel
torch.manual_seed(0); torch.set_num_threads(1)
deepspeed.init_distributed(dist_backend="gloo")
m = GPT2LMHeadModel.from_pretrained(sys.argv[1], attn_implementation="eager")
opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
cfg = {"train_batch_size": 8, "train_micro_batch_size_per_gpu": 8, "steps_per_print": 1,
       "gradient_clipping": 1.0, "wall_clock_breakdown": False}
eng, _, _, _ = deepspeed.initialize(model=m, optimizer=opt, config=cfg)
data = open(sys.argv[2], "rb").read()
blocks = torch.tensor(list(data[: len(data) // 64 * 64]), dtype=torch.long).view(-1, 64)
for step in range(6):
    t0 = time.perf_counter()
    x = blocks[step * 8:(step + 1) * 8]
    loss = eng(input_ids=x, labels=x).loss
    eng.backward(loss)
    eng.step()
    ms = (time.perf_counter() - t0) * 1000
    it = eng.global_steps
    # Megatron-DeepSpeed's training_log line (its format; Megatron-DeepSpeed is not installed)
    print(f" iteration {it:8d}/{6:8d} | consumed samples: {it * 8:12d} | consumed tokens: {it * 512:12d} |"
          f" elapsed time per iteration (ms): {ms:.1f} | learning rate: {eng.get_lr()[0]:.3E} |"
          f" global batch size: {8:5d} | lm loss: {loss.item():.6E} | loss scale: 1.0 |"
          f" number of skipped iterations: {0:3d} |"
          f" number of nan iterations: {0:3d} |", flush=True)
