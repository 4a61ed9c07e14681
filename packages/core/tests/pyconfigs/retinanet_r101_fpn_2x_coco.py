"""An experiment on four bases of three formats, with every construct a config may use."""
_base_ = [
    './_base_/models/retinanet_r50_fpn.py',
    './_base_/datasets/coco_detection.toml',
    './_base_/schedules/schedule_1x.yaml',
    './_base_/default_runtime.py',
]
data_root = 'data/voc/'  # a name assigned here is visible below; a base's names are not
img_norm_cfg = dict(mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375], to_rgb=True)
img_scale = (1333, 800)
train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='Resize', img_scale=img_scale, keep_ratio=True),
    dict(type='RandomFlip', flip_ratio=0.5),
    dict(type='Normalize', **img_norm_cfg),
    dict(type='Pad', size_divisor=32),
]
test_pipeline = train_pipeline[:2] + [train_pipeline[3]]
model = dict(
    backbone=dict(
        depth=101,
        init_cfg=dict(type='Pretrained', checkpoint='torchvision://resnet101')),
    bbox_head=dict(num_classes=20, anchor_generator={{_base_.model.bbox_head.anchor_generator}}),
    neck=dict(_delete_=True, type='PAFPN', in_channels=[256, 512, 1024, 2048], out_channels=256),
    base_norm='{{ _base_.model.backbone.norm_cfg }}',
)
data = dict(
    samples_per_gpu=4,
    train=dict(
        type='VOCDataset',
        ann_file=data_root + 'VOC2007/ImageSets/Main/trainval.txt',
        img_prefix=f'{data_root}VOC2007/',
        pipeline=train_pipeline),
    test=dict(pipeline=test_pipeline, classes=('aeroplane', 'bicycle')),
)
optimizer = dict(lr=0.02 / 8 * 2, weight_decay={{_base_.optimizer.weight_decay}})
lr_config = dict(step=[16, 22])
runner = dict(max_epochs=24)
# Operators, comparisons, conditionals, comprehensions, builtins and methods, all on data.
num_levels = len(model['neck']['in_channels'])
scales = [2**i for i in range(num_levels)]
names = {name: index for index, name in enumerate(['a', 'b', 'c']) if name != 'b'}
widths = sorted([64 * 4, 64, 64 * 2], reverse=True)
steps = list(range(0, 10, 3))
flags = dict(
    small=max(img_scale) < 1000,
    big=not min(img_scale) < 1000,
    both=img_scale[0] > 1 and img_scale[1] > 1,
    either=None or 'fallback',
    mode='large' if img_scale[0] >= 1333 else 'small',
    neg=-img_scale[1],
    pos=+img_scale[0],
    member='Pad' in [step['type'] for step in train_pipeline],
    pairs=dict(zip(['x', 'y'], img_scale)),
    total=sum(widths) // 64 % 5,
    ratio=round(abs(-2 / 3), 2),
    cast=[int('3'), float('1.5'), str(7), bool(0), tuple([1, 2])],
    backwards=list(reversed(steps)),
)
work_dir = './work_dirs/{}_{}x'.format('retinanet', 2)
tag = '-'.join(['r101', 'fpn']).upper().replace('-', '_').lower()
parts = 'a, b'.split(',')
clean = ' x '.strip()
checks = [tag.startswith('r101'), tag.endswith('fpn'), parts.index(' b') if ' b' in parts else -1]
cfg_copy = img_norm_cfg.copy()
cfg_copy.update(to_rgb=False)
keys = list(cfg_copy.keys())
first_mean = cfg_copy.get('mean')[0]
missing = cfg_copy.get('nothing', 'default')
values_count = len(list(cfg_copy.values()))
items = [key for key, _ in cfg_copy.items()]
extra_pipeline = train_pipeline.copy()
extra_pipeline.append(dict(type='Collect', keys=['img']))
extra_pipeline.extend([dict(type='DefaultFormatBundle')])
repeated = [0] * 3 + ['x'] * 2
banner = '=' * 5
sliced = 'retinanet'[:4]
__version__ = 'not a key: names starting with __ are left out'
