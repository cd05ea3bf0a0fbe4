// The replication frame and batch encodings: round trips, and bytes from the
// network that are not a frame refused as Corrupt.

#include "replication/replication_frame.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <string>

#include "storage/batch_codec.h"
#include "storage/snapshot_pack.h"

namespace apollo11::replication {
namespace {

TEST_CASE("a replication frame round-trips through its encoding", "[replication]") {
  ReplicationFrame f;
  f.type = FrameType::kBatch;
  f.epoch = 7;
  f.sender = "c1";
  f.batch = 42;
  f.seq = 1000;
  f.credit = 3;
  f.committed_at = 123456789;
  f.offset = 9;
  f.batch_epoch = 5;
  f.payload = std::string("\0\1binary", 8);
  f.checksum = Crc32(f.payload);
  auto back = DecodeFrame(EncodeFrame(f));
  REQUIRE(back.ok());
  CHECK(back->type == FrameType::kBatch);
  CHECK(back->epoch == 7);
  CHECK(back->sender == "c1");
  CHECK(back->batch == 42);
  CHECK(back->seq == 1000);
  CHECK(back->credit == 3);
  CHECK(back->committed_at == 123456789);
  CHECK(back->offset == 9);
  CHECK(back->batch_epoch == 5);
  CHECK(back->payload == f.payload);
  CHECK(back->checksum == Crc32(f.payload));
}

TEST_CASE("bytes that are not a replication frame are refused as corrupt", "[replication]") {
  ReplicationFrame f;
  f.sender = "c1";
  const std::string good = EncodeFrame(f);
  CHECK(DecodeFrame("").status().code() == StatusCode::kCorrupt);
  CHECK(DecodeFrame("garbage").status().code() == StatusCode::kCorrupt);
  CHECK(DecodeFrame(good.substr(0, good.size() - 1)).status().code() == StatusCode::kCorrupt);
  CHECK(DecodeFrame(good + "x").status().code() == StatusCode::kCorrupt);
  std::string bad_type = good;
  bad_type[2] = 99;  // the type byte follows the array header and the format
  CHECK(DecodeFrame(bad_type).status().code() == StatusCode::kCorrupt);
}

TEST_CASE("CRC-32 matches the IEEE check value and continues across pieces", "[replication]") {
  CHECK(Crc32("123456789") == 0xCBF43926u);
  CHECK(Crc32("6789", Crc32("12345")) == 0xCBF43926u);
}

TEST_CASE("a run batch round-trips through the batch encoding", "[replication][storage]") {
  storage::RunBatch batch;
  storage::TransitionRecord t;
  t.run_id = "r1";
  t.task_id = "a";
  t.to = TaskState::kReady;
  t.reason = "why";
  batch.Append(t);
  storage::ExecutionRecord x;
  x.exec_id = "r1.a";
  x.run_id = "r1";
  batch.PutExecution(x);
  storage::RunRecord r;
  r.run_id = "r1";
  r.pipeline_name = "p";
  batch.CreateRun(r);
  batch.PutRun(r);
  batch.PutPipeline("sha256:p", "{}");
  // A large snapshot travels packed, as it is stored, and arrives so (not
  // packed a second time).
  std::string big = "[";
  for (int i = 0; i < 20000; ++i) big += std::to_string(i) + ",";
  big += "0]";
  batch.PutPipeline("sha256:big", big);
  REQUIRE(storage::IsPackedSnapshot(batch.pipeline_snapshots()[1].second));
  batch.RecordDuration("p/a", 77);
  auto back = storage::codec::DecodeBatch(storage::codec::EncodeBatch(batch));
  REQUIRE(back.ok());
  REQUIRE(back->transitions() == 1);
  CHECK(back->transition_records()[0].reason == "why");
  CHECK(back->execution_records()[0].exec_id == "r1.a");
  CHECK(back->created_run_records()[0].pipeline_name == "p");
  CHECK(back->run_records()[0].run_id == "r1");
  CHECK(back->pipeline_snapshots()[0].second == "{}");
  CHECK(back->pipeline_snapshots()[1].second == batch.pipeline_snapshots()[1].second);
  CHECK(storage::UnpackSnapshot(back->pipeline_snapshots()[1].second).value() == big);
  CHECK(back->duration_samples()[0].second == 77);
  CHECK(storage::codec::DecodeBatch("nope").status().code() == StatusCode::kCorrupt);
}

TEST_CASE("the fuzz seeds of the replication frame decoder are frames", "[replication]") {
  const std::string dir = std::string(APOLLO11_SOURCE_DIR) + "/fuzz/corpus/replication_frame/";
  for (const char* name : {"batch.bin", "hello.bin", "chunk.bin"}) {
    INFO(name);
    std::ifstream in(dir + name, std::ios::binary);
    REQUIRE(in);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto f = DecodeFrame(bytes);
    REQUIRE(f.ok());
    CHECK(EncodeFrame(*f) == bytes);
    if (f->type == FrameType::kBatch) {
      CHECK(Crc32(f->payload) == f->checksum);
      CHECK(storage::codec::DecodeBatch(f->payload).ok());
    }
  }
}

}  // namespace
}  // namespace apollo11::replication
