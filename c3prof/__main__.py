from c3prof.cli import program

program()
