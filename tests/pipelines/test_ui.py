import pytest
from mind_harvest.pipelines.ui import main


def test_the_ui_help_describes_the_command_in_whole_sentences(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    description = " ".join(capsys.readouterr().out.split("\n\n")[1].split())
    assert exited.value.code == 0
    assert description.endswith("(what ``dagster dev`` does, with the commands Dagster supports for it).")
