#!/bin/bash
# Llama 3 70B pretraining with Megatron-LM (Megatron-Core models), written as
# such launch scripts usually are: sizes in variables, arguments in arrays,
# torchrun across nodes. Shapes: meta-llama/Meta-Llama-3-70B config.json
# (80 layers, hidden 8192, 64 heads, 8 KV heads, FFN 28672, vocab 128256).
# Parallelism: TP 8 inside a node, PP 4 with 5 layers per virtual stage
# (vp 4), sequence parallelism, distributed optimizer, selective
# recomputation. The node count comes from the scheduler, so
#   stacksim import megatron-llama3-70b.sh --topology dgx-h100 --gpus 64
# gives dp = 64 / (8 x 4) = 2.

export CUDA_DEVICE_MAX_CONNECTIONS=1

GPUS_PER_NODE=8
NNODES=${SLURM_NNODES}
MASTER_ADDR=${MASTER_ADDR:-localhost}
MASTER_PORT=6000

TP=8
PP=4
LAYERS_PER_VSTAGE=5
SEQ=8192
MBS=1
GBS=128

CHECKPOINT_PATH=/checkpoints/llama3-70b
DATA_PATH=/data/llama3_text_document

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NNODES
    --master_addr $MASTER_ADDR
    --master_port $MASTER_PORT
)

MODEL_ARGS=(
    --use-mcore-models
    --num-layers 80
    --hidden-size 8192
    --ffn-hidden-size 28672
    --num-attention-heads 64
    --group-query-attention
    --num-query-groups 8
    --seq-length $SEQ
    --max-position-embeddings $SEQ
    --position-embedding-type rope
    --rotary-base 500000
    --swiglu
    --normalization RMSNorm
    --norm-epsilon 1e-5
    --untie-embeddings-and-output-weights
    --disable-bias-linear
    --attention-dropout 0.0
    --hidden-dropout 0.0
)

TRAINING_ARGS=(
    --micro-batch-size $MBS
    --global-batch-size $GBS
    --train-iters 500000
    --lr 1.5e-4
    --min-lr 1.5e-5
    --lr-decay-style cosine
    --lr-warmup-iters 2000
    --weight-decay 0.1
    --clip-grad 1.0
    --adam-beta1 0.9
    --adam-beta2 0.95
    --bf16
    --recompute-granularity selective
    --use-flash-attn
)

PARALLEL_ARGS=(
    --tensor-model-parallel-size $TP
    --pipeline-model-parallel-size $PP
    --num-layers-per-virtual-pipeline-stage $LAYERS_PER_VSTAGE
    --sequence-parallel
    --use-distributed-optimizer
    --overlap-grad-reduce
    --overlap-param-gather
)

DATA_ARGS=(
    --data-path $DATA_PATH
    --tokenizer-type HuggingFaceTokenizer
    --tokenizer-model meta-llama/Meta-Llama-3-70B
    --vocab-size 128256
    --split 990,8,2
)

OUTPUT_ARGS=(
    --log-interval 10
    --save-interval 1000
    --eval-interval 1000
    --eval-iters 10
    --save $CHECKPOINT_PATH
    --load $CHECKPOINT_PATH
    --tensorboard-dir $CHECKPOINT_PATH/tensorboard
)

torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \
    ${MODEL_ARGS[@]} \
    ${TRAINING_ARGS[@]} \
    ${PARALLEL_ARGS[@]} \
    ${DATA_ARGS[@]} \
    ${OUTPUT_ARGS[@]} 2>&1 | tee train.log
