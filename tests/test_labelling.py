"latentnb.labelling: every answer is saved at once, and a new session resumes where the last one stopped."
import pytest
import torch

from latentnb.labelling import Labeller, labels_path, read_labels


@pytest.fixture
def images():
    torch.manual_seed(0)
    return torch.rand(6, 1, 28, 28)


def test_saves_after_every_answer(tmp_path, images):
    p = tmp_path/'l.csv'
    lab = Labeller(images, 'l', path=p, labeller='a')
    for n, handler in enumerate([lab.on_valid, lab.on_invalid, lab.on_skip], 1):
        handler(None)
        saved = read_labels(p)
        assert len(saved) == n and saved.item.tolist() == [str(i) for i in range(n)]
    assert read_labels(p).label.tolist() == ['valid', 'invalid', 'skip']
    assert lab.progress.value == 3 and lab.current == 3


def test_resume_after_interruption(tmp_path, images):
    p = tmp_path/'l.csv'
    first = Labeller(images, 'l', path=p, ids=list('abcdef'))
    first.b_valid.click(); first.b_invalid.click()
    del first                                    # session ends (kernel dies): nothing else is written
    second = Labeller(images, 'l', path=p, ids=list('abcdef'))
    assert second.current == 2 and second.progress.value == 2
    for ch in 'vvsi': second.keys.value = ch     # keyboard answers
    assert second.done
    assert second.labels.set_index('item').label.to_dict() == dict(a='valid', b='invalid', c='valid', d='valid', e='skip', f='invalid')
    assert Labeller(images, 'l', path=p, ids=list('abcdef')).done
    revisit = Labeller(images, 'l', path=p, ids=list('abcdef'), revisit_skipped=True)
    assert revisit.current == 4
    revisit.on_valid()
    assert read_labels(p).set_index('item').label['e'] == 'valid' and len(read_labels(p)) == 6


def test_undo(tmp_path, images):
    p = tmp_path/'l.csv'
    lab = Labeller(images, 'l', path=p)
    lab.on_valid(); lab.on_valid(); lab.undo()
    assert lab.current == 1 and len(read_labels(p)) == 1


def test_default_path_and_bad_names():
    assert labels_path('filtering_mnist').parts[-3:] == ('data', 'labels', 'filtering_mnist.csv')
    with pytest.raises(ValueError, match='plain file name'):
        labels_path('a/b')


def test_colour_and_uint8_images(tmp_path):
    import io
    from PIL import Image
    from latentnb.labelling import _png
    x = torch.rand(2, 3, 32, 32)
    assert Image.open(io.BytesIO(_png(x[0], scale=2))).mode == 'RGB'
    u8 = (x*255).round().to(torch.uint8)
    assert _png(u8[0]) == _png(u8[0].float()/255)                          # archive images (uint8) are shown as they are
    lab = Labeller(u8, 'c', path=tmp_path/'c.csv', labeller='a')
    lab.on_valid(); assert read_labels(tmp_path/'c.csv').label.tolist() == ['valid']
