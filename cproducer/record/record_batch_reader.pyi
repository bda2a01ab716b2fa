from typing import List, Optional, Tuple

from cproducer.record.record_batch_builder import RecordBatchBuilder

Record = Tuple[int, Optional[bytes], Optional[bytes], Optional[List[Tuple[str, Optional[bytes]]]]]

def read_records(builder: RecordBatchBuilder) -> List[Record]: ...
