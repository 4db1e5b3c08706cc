#pragma once
// A search's configurations as points of step time (x) against training
// cost (y): the Pareto front joined and in colour, the scenario's own
// configuration ringed. Hover names a point; a click chooses it.
#include <optional>

#include <QWidget>

#include "search_results.hpp"

namespace simtrain::gui {

class ParetoView : public QWidget {
  Q_OBJECT
public:
  explicit ParetoView(QWidget* parent = nullptr);

  void set_results(SearchResults results);
  const SearchResults& results() const { return results_; }
  // Where point `index` is drawn, in widget coordinates.
  QPointF position_of(int index) const;
  // The point drawn within a few pixels of `position`, if any.
  std::optional<int> point_at(QPointF position) const;

  QSize sizeHint() const override { return {440, 320}; }

signals:
  void point_chosen(int index);

protected:
  void paintEvent(QPaintEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;

private:
  QRectF plot_rect() const;

  SearchResults results_;
  double min_seconds_ = 0, max_seconds_ = 1, min_cost_ = 0, max_cost_ = 1;
  std::optional<int> chosen_;
};

}  // namespace simtrain::gui
