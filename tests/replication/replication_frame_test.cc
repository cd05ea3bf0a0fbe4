// The replication frame and batch encodings: round trips, and bytes from the
// network that are not a frame refused as Corrupt.

#include "replication/replication_frame.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <msgpack.hpp>
#include <string>

#include "storage/batch_codec.h"
#include "storage/memory_run_store.h"
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

// A standby that lacked these knew no registered pipeline, no trigger key
// and no fire after a failover: the cluster simulator found a schedule
// that stopped firing on a new leader (tests/sim/cluster_sim_test.cc).
TEST_CASE("the registry, trigger keys, schedules and fires travel in a replicated batch",
          "[replication][storage]") {
  storage::RunBatch batch;
  batch.PutPipelineVersion({"etl.daily", 3, "sha256:v3", 111, "cli"});
  batch.PutPipelineState({"etl.daily", 3, 3, true, 222, "ops"});
  batch.PutTriggerKey({"etl.daily", "k1", "r9", 333});
  batch.PutSchedule(storage::ScheduleRecord{"etl.daily", "sha256:v3", "{}", 444});
  storage::FireRecord fire;
  fire.pipeline = "etl.daily";
  fire.scheduled_at = 555;
  fire.run_id = "r9";
  fire.origin = "schedule";
  batch.PutFire(fire);
  auto back = storage::codec::DecodeBatch(storage::codec::EncodeBatch(batch));
  REQUIRE(back.ok());
  REQUIRE(back->pipeline_versions().size() == 1);
  CHECK(back->pipeline_versions()[0].version == 3);
  CHECK(back->pipeline_versions()[0].hash == "sha256:v3");
  CHECK(back->pipeline_versions()[0].added_by == "cli");
  REQUIRE(back->pipeline_states().size() == 1);
  CHECK(back->pipeline_states()[0].paused);
  CHECK(back->pipeline_states()[0].paused_by == "ops");
  REQUIRE(back->trigger_keys().size() == 1);
  CHECK(back->trigger_keys()[0].run_id == "r9");
  REQUIRE(back->schedule_records().size() == 1);
  CHECK(back->schedule_records()[0] == batch.schedule_records()[0]);
  REQUIRE(back->fire_records().size() == 1);
  CHECK(back->fire_records()[0] == fire);

  // Applied on a replica, the registry and the schedules read back as the
  // leader's.
  storage::MemoryRunStore leader, replica;
  storage::RunBatch shipped = *back;
  REQUIRE(leader.Commit(batch).ok());
  REQUIRE(replica.ApplyReplicated(1, 1, 7, shipped).ok());
  CHECK(replica.GetPipelineState("etl.daily").value()->paused);
  CHECK(replica.RunOfTriggerKey("etl.daily", "k1").value() == std::optional<std::string>("r9"));
  CHECK(replica.Schedules()->size() == 1);
  CHECK(replica.LastFire("etl.daily").value()->run_id == "r9");
  CHECK(replica.PipelineVersions("etl.daily")->size() == 1);
}

TEST_CASE("a format-1 batch of an older leader still decodes", "[replication][storage]") {
  // [1, transitions, executions, runs, created runs, snapshots, durations]
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> p(buf);
  p.pack_array(7);
  p.pack(uint8_t{1});
  for (int i = 0; i < 4; ++i) p.pack_array(0);
  p.pack_array(1);
  p.pack_array(2);
  p.pack(std::string("sha256:p"));
  p.pack(std::string("{}"));
  p.pack_array(0);
  auto back = storage::codec::DecodeBatch(std::string_view(buf.data(), buf.size()));
  REQUIRE(back.ok());
  CHECK(back->pipeline_snapshots().size() == 1);
  CHECK(back->schedule_records().empty());
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
