#pragma once
// Runs a simulation (or reads a trace) on a worker thread, so the window
// never freezes: progress while the replay runs, Cancel at any time.
#include <atomic>
#include <functional>
#include <memory>

#include <QObject>
#include <QString>

#include "timeline_model.hpp"

class QThread;

namespace simtrain::gui {

class StepRunner : public QObject {
  Q_OBJECT
public:
  using Job = std::function<StepResult(const ReplayOptions& options)>;

  explicit StepRunner(QObject* parent = nullptr);
  ~StepRunner() override;  // cancels a running job and waits for it

  bool busy() const { return thread_ != nullptr; }
  // `slot` travels with the outcome (A or B). Ignored while busy.
  void start(Job job, int slot);
  void cancel();

signals:
  void progress(double simulated_seconds, qulonglong tasks_done, qulonglong tasks_total);
  void finished(int slot, std::shared_ptr<const TimelineModel> model);
  void failed(int slot, const QString& message);
  void cancelled(int slot);

private:
  void on_thread_finished();

  QThread* thread_ = nullptr;
  std::atomic<bool> cancel_{false};
  int slot_ = 0;
  // Written by the worker, read after it ended.
  std::shared_ptr<const TimelineModel> model_;
  QString error_;
  bool interrupted_ = false;
};

}  // namespace simtrain::gui
