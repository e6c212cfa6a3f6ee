# gen_golden.py: regenerate the torch 1.13 golden files (Debian python3-torch, CPU, legacy exporter).
# Run with /usr/bin/python3 from this directory; writes trace.json and the tables torch prints.
import torch
import torch.nn as nn
from torch.profiler import profile, record_function, ProfilerActivity

torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Flatten(),
    nn.Linear(8 * 8 * 8, 64), nn.ReLU(), nn.Linear(64, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(4, 3, 8, 8)
y = torch.randint(0, 10, (4,))

with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    for step in range(3):
        with record_function("step%d" % step):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()

prof.export_chrome_trace("trace.json")
ka = prof.key_averages()
with open("table_default.txt", "w") as f:
    f.write(ka.table(row_limit=1000))
with open("table_cpu_time_total.txt", "w") as f:
    f.write(ka.table(sort_by="cpu_time_total", row_limit=1000))
with open("table_self_cpu_time_total.txt", "w") as f:
    f.write(ka.table(sort_by="self_cpu_time_total", row_limit=10))
with open("table_count.txt", "w") as f:
    f.write(ka.table(sort_by="count", row_limit=1000))
