#include "step_runner.hpp"

#include <QThread>

#include "sim/base/input_error.hpp"

namespace simtrain::gui {

StepRunner::StepRunner(QObject* parent) : QObject(parent) {
  qRegisterMetaType<std::shared_ptr<const TimelineModel>>();
}

StepRunner::~StepRunner() {
  if (!thread_) return;
  cancel_ = true;
  thread_->wait();
  delete thread_;
}

void StepRunner::start(Job job, int slot) {
  if (busy()) return;
  cancel_ = false;
  slot_ = slot;
  model_.reset();
  error_.clear();
  interrupted_ = false;
  thread_ = QThread::create([this, job = std::move(job)] {
    ReplayOptions options;
    options.cancel = &cancel_;
    options.on_progress = [this](const ReplayProgress& p) {
      emit progress(p.simulated_seconds, p.tasks_done, p.tasks_total);
    };
    try {
      model_ = std::make_shared<TimelineModel>(std::make_shared<StepResult>(job(options)));
    } catch (const Interrupted&) {
      interrupted_ = true;
    } catch (const InputError& e) {
      error_ = QString::fromStdString(e.what());
    } catch (const std::exception& e) {
      error_ = QString::fromStdString(std::string("error: ") + e.what());
    }
  });
  connect(thread_, &QThread::finished, this, &StepRunner::on_thread_finished);
  thread_->start();
}

void StepRunner::cancel() { cancel_ = true; }

void StepRunner::on_thread_finished() {
  thread_->wait();
  delete thread_;
  thread_ = nullptr;
  if (interrupted_ || (cancel_ && !model_)) emit cancelled(slot_);
  else if (!error_.isEmpty()) emit failed(slot_, error_);
  else emit finished(slot_, std::move(model_));
}

}  // namespace simtrain::gui
