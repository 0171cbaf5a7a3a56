class HipError(RuntimeError):
    call: str
    code: int
    name: str
    description: str

    def __init__(self, call: str, code: int, name: str, description: str) -> None: ...

NO_GPU_ERRORS: tuple[int, int]
