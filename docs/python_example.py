"""Abacus from Python, without a notebook: will it fit, what batch, how long per epoch?

    pip install ./python                       # once, from the repository root (builds libabacus.so)
    OMP_NUM_THREADS=1 python docs/python_example.py

Every number is a prediction of the library for one training iteration on this project's reference CPU
(hardware id cpu1: one thread; hw="cpu2" for two), PyTorch 1.13.1, float32.
"""
import torch
import torchvision

import abacus

model = torchvision.models.mobilenet_v2(num_classes=10)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)

# 1. One iteration at the batch you had in mind: time, peak memory, where the memory goes.
est = abacus.estimate(model, input_size=(3, 96, 96), batch_size=32, optimizer=opt)
print(est)
print(f"\nan epoch of 50,000 samples: {abacus.fmt_duration(est.epoch_s(50_000))}")

# 2. The largest batch that fits 2 GiB (upper end of the 90 % interval), and the table around it.
print("\nlargest batch within 2 GiB:", abacus.max_batch(model, input_size=(3, 96, 96), memory="2GiB", optimizer=opt))
for row in abacus.plan(model, input_size=(3, 96, 96), memory="2GiB", optimizer=opt, as_dataframe=False):
    print(f"  batch {row['batch']:5d}  {abacus.fmt_duration(row['time_s']):>9}/iter  "
          f"{abacus.fmt_bytes(row['memory_bytes']):>11}  {row['verdict']}")

# 3. Per layer: what each keeps for backward (its training memory) and its share of the time.
s = abacus.summary(model, input_size=(3, 96, 96), batch_size=32, optimizer=opt)
print("\n" + "\n".join(repr(s).splitlines()[:8] + ["..."] + repr(s).splitlines()[-5:]))

# 4. A token model: the sequence length instead of an image size.
lm = torch.nn.Sequential(torch.nn.Embedding(8192, 256), torch.nn.TransformerEncoder(
    torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True), 2), torch.nn.Linear(256, 8192))
print("\n" + repr(abacus.estimate(lm, seq_len=128, batch_size=8, optimizer="adam")).split("\n\n")[0])
