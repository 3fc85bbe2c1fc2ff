#!/usr/bin/env bash
# The torch SUT's accuracy path on a real GPU, without data or weights (none reach the GPU
# machine): 64 generated JPEGs + val_map.txt, a 16-question SQuAD file with a 20-word vocabulary,
# and RANDOM weights saved to files (so the run records say "real" weights: miglab cannot tell a
# file's weights are untrained). It checks the plumbing -- ImageNet/SQuAD loading per query, the
# int64 / float32 accuracy logs, accuracy.txt, the gate (exit 1 below the target) -- not accuracy.
# Run from the repository root on the GPU machine with the LoadGen wheel in .whl/ (see
# bench/RESULTS-gpu.md); OUT gets acc-<benchmark>.log.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 || exit
D=/tmp/acc; mkdir -p $D/img; cd $D && python3 - <<'P'
import json,numpy as np,torch,torchvision
from PIL import Image
from transformers import BertConfig,BertForQuestionAnswering
g=np.random.default_rng(0);lines=[]
for i in range(64):
    n=f"ILSVRC2012_val_{i+1:08d}.JPEG";Image.fromarray(g.integers(0,255,(300+i,400,3),dtype=np.uint8)).save("img/"+n);lines.append(f"{n} {i%1000}")
open("img/val_map.txt","w").write("\n".join(lines)+"\n")
torch.manual_seed(0);torch.save(torchvision.models.resnet50().state_dict(),"r50.pt")
w="[PAD] [UNK] [CLS] [SEP] [MASK] the cat sat on mat who what where a dog ran in park ##s".split()
open("vocab.txt","w").write("\n".join(w)+"\n")
ctx="the cat sat on the mat . a dog ran in the park ."
qs=[{"id":f"q{i}","question":q,"answers":[{"text":a,"answer_start":ctx.index(a)}]} for i,(q,a) in enumerate([("who sat on the mat","the cat"),("where ran a dog","in the park")]*8)]
json.dump({"version":"1.1","data":[{"title":"t","paragraphs":[{"context":ctx,"qas":qs}]}]},open("dev.json","w"))
c=BertConfig(vocab_size=30522,hidden_size=1024,num_hidden_layers=24,num_attention_heads=16,intermediate_size=4096)
torch.save(BertForQuestionAnswering(c).state_dict(),"bert.pt")
P
cd - >/dev/null
for b in "resnet50 --weights $D/r50.pt --dataset-path $D/img --performance-sample-count 64" "bert-99 --weights $D/bert.pt --squad-json $D/dev.json --vocab $D/vocab.txt --performance-sample-count 16"; do
 set -- $b; timeout 200 python3 -m miglab.mlperf.run --backend reference --sut torch --device cuda --mode AccuracyOnly --scenario Offline --benchmark $b --out $D/out --raw-seconds 1 --cache-dir $D/cache > $OUT/acc-$1.log 2>&1; echo "$1 exit $?"; tail -4 $OUT/acc-$1.log
 cat $D/out/$1/Offline/accuracy/run_1/accuracy.txt; python3 -c "import json,sys;d=json.load(open('$D/out/$1/Offline/accuracy/run_1/miglab_run.json'));print(d.get('accuracy'),d.get('device'),d.get('dataset'))"
done
