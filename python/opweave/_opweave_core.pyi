# Type stubs for the private extension module. Keep in step with csrc/bindings/.
__version__: str

class CoreError(RuntimeError):
    """args = (code: int, message: str)"""
