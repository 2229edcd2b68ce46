#include "sim/report/cluster_html.h"

#include <gtest/gtest.h>

#include "sim/cluster/cluster_test_util.h"

namespace stacksim::cluster {
namespace {

using testing::Job;

TEST(ClusterHtml, PageShowsGpuTimeByStateOverTimeAndIsSelfContained) {
  ClusterShape shape;
  shape.nodes = 4;
  shape.gpus_per_node = 8;
  shape.nodes_per_leaf = 4;
  shape.nodes_per_spine = 4;
  // A runs 0-10 h on 3 nodes, B (all 4 nodes) waits for it: the head-blocked
  // idle of the fourth node shows up in the state chart.
  ClusterResult r = RunCluster(shape, {Job("A", 0, 24, 10), Job("B", 1, 32, 5)}, ClusterOptions{});
  const std::string html = report::ClusterHtml(r);
  for (const char* text : {"Where the GPU-time went", "GPUs over time", "Queue over time", "busy",
                           "idle: head job needs more nodes", "GPU utilization"}) {
    EXPECT_NE(html.find(text), std::string::npos) << text;
  }
  // One row per hourly window of the 15 h makespan (under the fold limit).
  size_t rows = 0;
  for (size_t at = html.find("% busy"); at != std::string::npos; at = html.find("% busy", at + 1)) ++rows;
  EXPECT_EQ(rows, r.series.size());
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html, report::ClusterHtml(r));
}

}  // namespace
}  // namespace stacksim::cluster
