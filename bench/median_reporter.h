// The reporter both benchmarks use: Google Benchmark's console table, plus
// the median of each benchmark (in the benchmark's unit) for the summary
// each program prints from the same run.
#pragma once

#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

class MedianReporter : public benchmark::ConsoleReporter {
public:
  // Keyed by "function" or "function/args".
  std::map<std::string, double> median;
  void ReportRuns(const std::vector<Run> &runs) override {
    for (const Run &r : runs)
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name == "median") {
        double t = r.GetAdjustedRealTime();
        median[r.run_name.function_name] = t;
        if (!r.run_name.args.empty())
          median[r.run_name.function_name + "/" + r.run_name.args] = t;
      }
    ConsoleReporter::ReportRuns(runs);
  }
};
