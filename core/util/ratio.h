// num / den, or 0 where den is not positive (a run with no steps, no slots or no time): the
// one definition of every derived figure's division in the stats, the report and the CLI.
#pragma once

namespace pagedgen {

inline double ratio(double num, double den) { return den > 0 ? num / den : 0.0; }

}  // namespace pagedgen
