"Packaging for latentnb: reads the project's metadata from settings.ini (nbdev 2 layout)."
from configparser import ConfigParser
import setuptools

cfg = ConfigParser(delimiters=['='])
cfg.read('settings.ini', encoding='utf-8')
cfg = cfg['DEFAULT']
setuptools.setup(
    name=cfg['lib_name'], version=cfg['version'], description=cfg['description'],
    author=cfg['author'], author_email=cfg['author_email'], license=cfg['license'],
    packages=setuptools.find_packages(include=['latentnb', 'latentnb.*']),
    package_data={'latentnb': ['profiles.toml']}, include_package_data=True,
    python_requires='>=' + cfg['min_python'], install_requires=cfg['requirements'].split(),
    extras_require={'dev': cfg['dev_requirements'].split()},
    entry_points={'nbdev': [f"{cfg['lib_path']}={cfg['lib_path']}._modidx:d"],
                  'console_scripts': ['latentnb_fetch=latentnb.data:latentnb_fetch', 'latentnb=latentnb.tools.cli:main']},
    zip_safe=False)
