// How the compare table writes B against A: a percentage of A where the two
// are close, their ratio where a percentage would hide the gap.
#include <QTest>

#include "text_format.hpp"

using namespace simtrain::gui;

class TextFormatTest : public QObject {
  Q_OBJECT

private slots:
  void closeFiguresChangeByAPercentageOfA() {
    QCOMPARE(format_change(100, 112.3, false).value(), std::string("+12.3 %"));
    QCOMPARE(format_change(100, 90.7, false).value(), std::string("−9.3 %"));
    QVERIFY(!format_change(100, 100.01, false));  // rounds to nothing: "same"
  }

  // 0.35 ms of exposed communication against 10.3 ms: not "+2,842.9 %".
  void farApartFiguresShowTheirRatio() {
    QCOMPARE(format_change(0.35e-3, 10.3e-3, false).value(), std::string("29.4x"));
    QCOMPARE(format_change(16024, 1, false).value(), std::string("1/16,024x"));
    QCOMPARE(format_change(1, 2, false).value(), std::string("2x"));
    QCOMPARE(format_change(2, 1, false).value(), std::string("1/2x"));
    QCOMPARE(format_change(1, 0, false).value(), std::string("−100.0 %"));
    QCOMPARE(format_change(0, 1, false).value(), std::string("new"));
    QVERIFY(!format_change(0, 0, false));
  }

  void sharesChangeInPercentagePoints() {
    QCOMPARE(format_change(0.359, 0.283, true).value(), std::string("−7.6 pt"));
    QCOMPARE(format_change(0.01, 0.5, true).value(), std::string("+49.0 pt"));
  }
};

QTEST_GUILESS_MAIN(TextFormatTest)
#include "test_text_format.moc"
