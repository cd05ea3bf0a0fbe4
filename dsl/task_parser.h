#pragma once
// Reads one task mapping of a pipeline into a TaskSpec, driven by the task
// field list (task_fields.h): which keys exist, which task type owns each,
// and the Read* method that reads and checks each one. Internal to dsl/.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dsl/field_reader.h"
#include "dsl/library.h"
#include "dsl/pipeline.h"
#include "dsl/yaml_tree.h"

namespace apollo11::dsl::internal {

class TaskParser {
 public:
  // `report` and `library` must outlive the parser; `base_dir` anchors
  // relative script paths; `params` are the pipeline's, for ${params.NAME}.
  TaskParser(FieldReader* report, Library* library, std::filesystem::path base_dir,
             const std::map<std::string, std::string>* params)
      : report_(report), library_(library), base_dir_(std::move(base_dir)), params_(params) {}

  // Appends the task `node` of `file` to spec->tasks when it has an id,
  // after reporting every problem of it.
  void Parse(const YamlNode& node, const std::string& file, PipelineSpec* spec);

 private:
  using Reader = bool (*)(TaskParser&, const Field&, TaskSpec*);
  // Each task key's reader, from APOLLO11_TASK_FIELDS.
  static const std::unordered_map<std::string_view, Reader>& Readers();

  // The task's own fields with those of the templates it extends added
  // (its own win).
  std::vector<Field> WithTemplates(const std::vector<Field>& own);
  // Reports a type's required key that is missing.
  void RequireTypeFields(const TaskSpec& task, const std::string& label,
                         const std::map<std::string, const Field*>& by_key);

  // The readers named in APOLLO11_TASK_FIELDS: each reads and checks one
  // key's value into the member; false after reporting why it cannot.
  bool ReadId(const Field& f, std::string* id);
  bool ReadType(const Field& f, TaskType* type);
  bool ReadText(const Field& f, std::string* out);
  bool ReadTextOrEmpty(const Field& f, std::string* out);
  bool ReadScriptPath(const Field& f, std::string* out);
  bool ReadTextList(const Field& f, std::vector<std::string>* out);
  bool ReadHttpUrl(const Field& f, std::string* out);
  bool ReadHttpMethod(const Field& f, std::string* out);
  bool ReadTextMap(const Field& f, std::map<std::string, std::string>* out);
  bool ReadEnvMap(const Field& f, std::map<std::string, std::string>* out);
  // Variable names to secret references, each checked by ParseSecretRef.
  bool ReadSecretMap(const Field& f, std::map<std::string, std::string>* out);
  bool ReadHttpStatuses(const Field& f, std::vector<int>* out);
  bool ReadDbUrl(const Field& f, std::string* out);
  bool ReadEnvName(const Field& f, std::string* out);
  // The content of the file at `path` named by field `f`, or nullopt after
  // reporting why not: unreadable, over kMaxTaskCodeBytes, or empty unless
  // `allow_empty`. `what` names the file in messages ("SQL script").
  std::optional<std::string> ReadTaskFile(const Field& f, const std::string& path,
                                          const std::string& what, bool allow_empty);
  // A db task's `script:` (already resolved to a file) is read into its
  // `sql`, and `script` keeps the file name; `sql` and `script` together,
  // or a script over 1 MiB, is an error (dsl/task_code.cc).
  void LoadDbScript(TaskSpec* task, const std::map<std::string, const Field*>& by_key);
  // A python task's `script:` file is read into its `code`, and `script`
  // keeps the file name; `script` and `code` together is an error. Without
  // file reads the script stays the worker's path (RequireWorkerScriptPath).
  void LoadPythonScript(TaskSpec* task, const std::map<std::string, const Field*>& by_key);
  // Without file reads (ParseOptions::read_files): a python script is the
  // worker's path, so it must be absolute and normal.
  void RequireWorkerScriptPath(const TaskSpec& task,
                               const std::map<std::string, const Field*>& by_key);
  bool ReadDependsOn(const Field& f, std::vector<Dependency>* out);
  bool ReadTrigger(const Field& f, Trigger* out);
  bool ReadRetry(const Field& f, RareOptional<RetryPolicy>* out);
  bool ReadTimeout(const Field& f, RareOptional<Millis>* out);
  bool ReadGroup(const Field& f, std::string* out);
  bool ReadLabels(const Field& f, std::vector<std::string>* out);
  bool ReadPriority(const Field& f, int* out);
  bool ReadKeyTemplate(const Field& f, std::string* out);
  bool ReadExtends(const Field& f, TaskSpec* task);
  // `foreach: TASK` or `foreach: {task: TASK, items: output[.PATH]}`: the
  // task id; ReadForeachItems takes the items path of the mapping form.
  bool ReadForeach(const Field& f, std::string* out);
  bool ReadForeachItems(const Field& f, std::string* out);
  bool ReadMaxParallel(const Field& f, int* out);

  // Keeps the first of the entries naming the same task and condition (a
  // repeat changes nothing; an aliased list repeated in many tasks must not
  // multiply) and warns once per repeated pair.
  void DropRepeatedDependencies(std::vector<Dependency>* deps);
  // One entry of depends_on in its {task: NAME, on: CONDITION} form.
  void ReadDependencyEntry(const Field& f, const YamlNode& n, std::vector<Dependency>* out);

  FieldReader* report_;
  Library* library_;
  std::filesystem::path base_dir_;
  const std::map<std::string, std::string>* params_;
};

}  // namespace apollo11::dsl::internal
