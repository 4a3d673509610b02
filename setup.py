"""Install t2t-repro: `pip install .` (add `[test]` for the test suite, `[ctranslate2]` for CTranslate2 exports,
`[bench]` for benchmark peers)."""

from setuptools import find_packages, setup

setup(
    name="t2t-repro",
    version="0.1.0",
    description='A TensorFlow 2 / Keras 3 reproduction of "Attention Is All You Need" in the tensor2tensor style.',
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.10",
    packages=find_packages(include=["t2t_repro", "t2t_repro.*"]) + ["t2t_repro.problems", "t2t_repro.hparams"],
    # problems/ and hparams/ live at the top of the repository but install inside the t2t_repro namespace,
    # so no generic top-level package names land in site-packages.
    package_dir={
        "t2t_repro": "t2t_repro",
        "t2t_repro.problems": "problems",
        "t2t_repro.hparams": "hparams",
    },
    install_requires=[
        "tensorflow==2.21.*",
        "tensorflow-text==2.21.*",
        "keras>=3.10",
        "tensorflow-datasets",
        "sacrebleu",
        "sentencepiece",
        "sacremoses",
        "tensorboard",
        "tqdm",
        "matplotlib",
    ],
    extras_require={
        # CTranslate2 exports, decoding and serving (t2t-repro-exporter --format=ctranslate2, --engine=ctranslate2).
        "ctranslate2": ["ctranslate2>=4.8,<5"],
        "test": ["pytest", "import-linter", "ctranslate2>=4.8,<5"],
        "bench": ["keras-hub"],
    },
    entry_points={
        "console_scripts": [
            "t2t-repro-trainer=t2t_repro.cli.trainer:main",
            "t2t-repro-datagen=t2t_repro.cli.datagen:main",
            "t2t-repro-decoder=t2t_repro.cli.decoder:main",
            "t2t-repro-avg-checkpoints=t2t_repro.cli.avg_checkpoints:main",
            "t2t-repro-bleu=t2t_repro.cli.bleu:main",
            "t2t-repro-evalb=t2t_repro.cli.evalb:main",
            "t2t-repro-exporter=t2t_repro.cli.exporter:main",
            "t2t-repro-serve=t2t_repro.cli.serve:main",
            "t2t-repro-visualize=t2t_repro.cli.visualize:main",
        ],
    },
)
