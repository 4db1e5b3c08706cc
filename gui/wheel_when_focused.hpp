#pragma once
// A form field that the mouse wheel edits only once it has focus (clicked or
// tabbed into): a wheel over an unfocused one scrolls the form around it
// instead of silently changing its value (Qt's default takes the focus and
// the value on the first wheel step).
#include <QWheelEvent>

namespace simtrain::gui {

template <class Field>
class WheelWhenFocused : public Field {
public:
  WheelWhenFocused() { this->setFocusPolicy(Qt::StrongFocus); }

protected:
  void wheelEvent(QWheelEvent* event) override {
    if (this->hasFocus())
      Field::wheelEvent(event);
    else
      event->ignore();  // to the scroll area
  }
};

}  // namespace simtrain::gui
