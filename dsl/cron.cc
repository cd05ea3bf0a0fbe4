#include "dsl/cron.h"

#include "dsl/cron_schedule.h"

namespace apollo11::dsl {

Status ValidateCron(std::string_view text) { return CronSchedule::Parse(text).status(); }

}  // namespace apollo11::dsl
