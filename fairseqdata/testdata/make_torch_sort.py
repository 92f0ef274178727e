import json, random, torch
random.seed(3)
cases = []
for n in [5, 16, 17, 30, 48, 48, 64, 100, 200]:
    for _ in range(3):
        k = random.choice([3, 6, 20, 60])
        xs = sorted(random.randint(1, k) for _ in range(n)) if random.random() < 0.6 else [random.randint(1, k) for _ in range(n)]
        _, order = torch.tensor(xs).sort(descending=True)
        cases.append({"keys": xs, "order": order.tolist()})
print(json.dumps(cases))
